from enum import StrEnum

class StudiesSessionLabelsListRole(StrEnum):
    METHOD = "method"
    REFERENCE = "reference"

    def __str__(self) -> str:
        return str(self.value)
