from enum import StrEnum

class StudiesConversationsListKind(StrEnum):
    LONGITUDINAL = "longitudinal"
    MULTI = "multi"
    SINGLE = "single"

    def __str__(self) -> str:
        return str(self.value)
