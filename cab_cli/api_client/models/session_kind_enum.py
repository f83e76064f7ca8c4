from enum import StrEnum

class SessionKindEnum(StrEnum):
    CALLBACK = "callback"
    CHAT = "chat"
    COUNSELING = "counseling"
    CRISIS = "crisis"

    def __str__(self) -> str:
        return str(self.value)
