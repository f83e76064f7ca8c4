from enum import StrEnum

class RoleEnum(StrEnum):
    METHOD = "method"
    REFERENCE = "reference"

    def __str__(self) -> str:
        return str(self.value)
