from enum import StrEnum

class StudyOutStatusEnum(StrEnum):
    ARCHIVED = "archived"
    OPEN = "open"
    SETUP = "setup"

    def __str__(self) -> str:
        return str(self.value)
