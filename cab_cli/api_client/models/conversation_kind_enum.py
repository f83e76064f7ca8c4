from enum import StrEnum

class ConversationKindEnum(StrEnum):
    LONGITUDINAL = "longitudinal"
    MULTI = "multi"
    SINGLE = "single"

    def __str__(self) -> str:
        return str(self.value)
