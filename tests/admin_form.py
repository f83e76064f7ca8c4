"""A Django admin page's form as a browser would post it unchanged, for tests that post the admin's forms for real
(the change is added to what the page shows)."""

from __future__ import annotations

from html.parser import HTMLParser


class _Form(HTMLParser):
    """The fields of a page's form as a browser would post them unchanged: inputs, checked boxes, selected options,
    text areas."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("submit", "button", "file"):
            if a.get("type") not in ("checkbox", "radio") or "checked" in a:
                self.data[name] = a.get("value") or ("on" if a.get("type") == "checkbox" else "")
        elif tag == "select" and name:
            self._select = name
            self.data.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in a:
            self.data[self._select] = a.get("value") or ""
        elif tag == "textarea" and name:
            self._textarea = name
            self.data[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.data[self._textarea] += data.removeprefix("\n") if not self.data[self._textarea] else data


def form_fields(client, url: str) -> dict[str, str]:  # noqa: ANN001
    """The fields of the form of the page at ``url`` as a browser would post them unchanged."""
    page = _Form()
    page.feed(client.get(url).content.decode())
    return page.data
