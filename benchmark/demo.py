"""The real Appendix D examples (five models' responses to CounselChat, PAIR, CARE-Bench and HOPE
conversations), turned into conversation records (docs/reference.md#conversations-json-lines) for the
demo study."""

from __future__ import annotations

import json
from pathlib import Path

DEMO_FILE = Path(__file__).resolve().parent / "demo_data" / "appendix_d_examples.json"

# The paper labels two examples with compound topics; the study's label set has one topic per conversation,
# so the demo files them under their first (primary) label and keeps the original wording in the title.
_TOPIC_OF = {"Depression / Anxiety": "Depression", "Anxiety / Driving Phobia": "Anxiety"}


def demo_records() -> list[dict]:
    source = json.loads(DEMO_FILE.read_text(encoding="utf-8"))
    records = []
    for number, conversation in enumerate(source["conversations"], start=1):
        topic = conversation["topic"]
        records.append(
            {
                "dataset": conversation["dataset"],
                "conversation_id": f"appendix-d-{number}",
                "kind": conversation["kind"],
                "topic": _TOPIC_OF.get(topic, topic),
                "complexity": conversation.get("complexity"),
                "title": f"{conversation['title']} — {topic}",
                "turns": [
                    {
                        "index": turn["index"],
                        "client": turn["client"],
                        "therapist_reference": turn.get("therapist_reference") or "",
                        "responses": turn.get("responses", []),
                    }
                    for turn in conversation["turns"]
                ],
            }
        )
    return records
