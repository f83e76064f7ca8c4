from enum import StrEnum

class TopicEnum(StrEnum):
    ADDICTION_SUBSTANCE_USE = "Addiction / Substance Use"
    ADHD = "ADHD"
    ANXIETY = "Anxiety"
    COUNSELING_FUNDAMENTALS = "Counseling Fundamentals"
    DEPRESSION = "Depression"
    DIAGNOSIS = "Diagnosis"
    EMOTIONAL_REGULATION = "Emotional Regulation"
    FAMILY_CONFLICTS = "Family Conflicts"
    GRIEF_AND_LOSS = "Grief and Loss"
    INTIMATE_RELATIONSHIPS = "Intimate Relationships"
    MILITARY_ISSUES = "Military Issues"
    MOTIVATION = "Motivation"
    NUTRITIONAL_PHYSICAL_FITNESS = "Nutritional / Physical Fitness"
    SELF_ESTEEM = "Self-esteem"
    SELF_HARM_SUICIDAL_IDEATION = "Self-harm / Suicidal Ideation"
    SEXUALITY = "Sexuality"
    SEXUAL_HARASSMENT = "Sexual Harassment"
    SLEEP = "Sleep"
    SOCIAL_ECONOMIC_WELL_BEING = "Social / Economic Well-being"
    SOCIAL_WORK_RELATIONSHIPS = "Social / Work Relationships"
    SPIRITUALITY = "Spirituality"
    TRAUMA = "Trauma"

    def __str__(self) -> str:
        return str(self.value)
