from enum import StrEnum

class RoundOutKindEnum(StrEnum):
    CALIBRATION = "calibration"
    MAIN = "main"

    def __str__(self) -> str:
        return str(self.value)
