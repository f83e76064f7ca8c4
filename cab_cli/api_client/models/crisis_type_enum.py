from enum import StrEnum

class CrisisTypeEnum(StrEnum):
    ANXIETY = "anxiety"
    SELF_HARM = "self-harm"
    SI = "SI"

    def __str__(self) -> str:
        return str(self.value)
