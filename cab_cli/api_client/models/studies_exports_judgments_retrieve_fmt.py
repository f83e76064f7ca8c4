from enum import StrEnum

class StudiesExportsJudgmentsRetrieveFmt(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"

    def __str__(self) -> str:
        return str(self.value)
