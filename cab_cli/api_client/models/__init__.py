""" Contains all the data models used in inputs/outputs """

from .assignment_out import AssignmentOut
from .coder_progress_out import CoderProgressOut
from .complexity_enum import ComplexityEnum
from .conversation_kind_enum import ConversationKindEnum
from .conversation_out import ConversationOut
from .conversation_sessions_request import ConversationSessionsRequest
from .conversation_turns_request import ConversationTurnsRequest
from .conversations_ingest_out import ConversationsIngestOut
from .crisis_type_enum import CrisisTypeEnum
from .error_out import ErrorOut
from .error_out_fields import ErrorOutFields
from .format_enum import FormatEnum
from .item_error_out import ItemErrorOut
from .items_file_in_request import ItemsFileInRequest
from .judgment_import_out import JudgmentImportOut
from .judgment_out import JudgmentOut
from .judgments_file_in_request import JudgmentsFileInRequest
from .method_in_request import MethodInRequest
from .method_out import MethodOut
from .metric_report_out import MetricReportOut
from .metric_report_out_calibration import MetricReportOutCalibration
from .metric_report_out_care import MetricReportOutCare
from .metric_report_out_indices import MetricReportOutIndices
from .metric_report_out_lc_8 import MetricReportOutLc8
from .metric_report_out_parameters import MetricReportOutParameters
from .metric_run_in_request import MetricRunInRequest
from .metric_run_out import MetricRunOut
from .metric_run_out_parameters import MetricRunOutParameters
from .metric_run_out_status_enum import MetricRunOutStatusEnum
from .paginated_assignment_out_list import PaginatedAssignmentOutList
from .paginated_conversation_out_list import PaginatedConversationOutList
from .paginated_judgment_out_list import PaginatedJudgmentOutList
from .paginated_metric_run_out_list import PaginatedMetricRunOutList
from .paginated_response_item_out_list import PaginatedResponseItemOutList
from .paginated_session_label_out_list import PaginatedSessionLabelOutList
from .reference_in_request import ReferenceInRequest
from .reference_out import ReferenceOut
from .report_attribute_out import ReportAttributeOut
from .report_file_out import ReportFileOut
from .report_file_out_calibration import ReportFileOutCalibration
from .report_file_out_care import ReportFileOutCare
from .report_file_out_indices import ReportFileOutIndices
from .report_file_out_lc_8 import ReportFileOutLc8
from .report_file_out_parameters import ReportFileOutParameters
from .report_input_out import ReportInputOut
from .report_input_out_dropped import ReportInputOutDropped
from .report_run_out import ReportRunOut
from .report_run_out_parameters import ReportRunOutParameters
from .report_software_out import ReportSoftwareOut
from .report_study_out import ReportStudyOut
from .report_warning_out import ReportWarningOut
from .response_in_request import ResponseInRequest
from .response_item_in_request import ResponseItemInRequest
from .response_item_out import ResponseItemOut
from .response_out import ResponseOut
from .responses_ingest_out import ResponsesIngestOut
from .role_enum import RoleEnum
from .round_out import RoundOut
from .round_out_kind_enum import RoundOutKindEnum
from .round_out_status_enum import RoundOutStatusEnum
from .session_in_request import SessionInRequest
from .session_kind_enum import SessionKindEnum
from .session_label_coder_counts_out import SessionLabelCoderCountsOut
from .session_label_import_out import SessionLabelImportOut
from .session_label_import_out_coders import SessionLabelImportOutCoders
from .session_label_out import SessionLabelOut
from .session_label_row_in_request import SessionLabelRowInRequest
from .session_labels_in_request import SessionLabelsInRequest
from .session_out import SessionOut
from .span_out import SpanOut
from .studies_conversations_list_kind import StudiesConversationsListKind
from .studies_exports_judgments_retrieve_fmt import StudiesExportsJudgmentsRetrieveFmt
from .studies_metric_runs_list_status import StudiesMetricRunsListStatus
from .studies_session_labels_list_role import StudiesSessionLabelsListRole
from .study_in_request import StudyInRequest
from .study_out import StudyOut
from .study_out_status_enum import StudyOutStatusEnum
from .topic_enum import TopicEnum
from .turn_in_request import TurnInRequest
from .turn_out import TurnOut

__all__ = (
    "AssignmentOut",
    "CoderProgressOut",
    "ComplexityEnum",
    "ConversationKindEnum",
    "ConversationOut",
    "ConversationSessionsRequest",
    "ConversationsIngestOut",
    "ConversationTurnsRequest",
    "CrisisTypeEnum",
    "ErrorOut",
    "ErrorOutFields",
    "FormatEnum",
    "ItemErrorOut",
    "ItemsFileInRequest",
    "JudgmentImportOut",
    "JudgmentOut",
    "JudgmentsFileInRequest",
    "MethodInRequest",
    "MethodOut",
    "MetricReportOut",
    "MetricReportOutCalibration",
    "MetricReportOutCare",
    "MetricReportOutIndices",
    "MetricReportOutLc8",
    "MetricReportOutParameters",
    "MetricRunInRequest",
    "MetricRunOut",
    "MetricRunOutParameters",
    "MetricRunOutStatusEnum",
    "PaginatedAssignmentOutList",
    "PaginatedConversationOutList",
    "PaginatedJudgmentOutList",
    "PaginatedMetricRunOutList",
    "PaginatedResponseItemOutList",
    "PaginatedSessionLabelOutList",
    "ReferenceInRequest",
    "ReferenceOut",
    "ReportAttributeOut",
    "ReportFileOut",
    "ReportFileOutCalibration",
    "ReportFileOutCare",
    "ReportFileOutIndices",
    "ReportFileOutLc8",
    "ReportFileOutParameters",
    "ReportInputOut",
    "ReportInputOutDropped",
    "ReportRunOut",
    "ReportRunOutParameters",
    "ReportSoftwareOut",
    "ReportStudyOut",
    "ReportWarningOut",
    "ResponseInRequest",
    "ResponseItemInRequest",
    "ResponseItemOut",
    "ResponseOut",
    "ResponsesIngestOut",
    "RoleEnum",
    "RoundOut",
    "RoundOutKindEnum",
    "RoundOutStatusEnum",
    "SessionInRequest",
    "SessionKindEnum",
    "SessionLabelCoderCountsOut",
    "SessionLabelImportOut",
    "SessionLabelImportOutCoders",
    "SessionLabelOut",
    "SessionLabelRowInRequest",
    "SessionLabelsInRequest",
    "SessionOut",
    "SpanOut",
    "StudiesConversationsListKind",
    "StudiesExportsJudgmentsRetrieveFmt",
    "StudiesMetricRunsListStatus",
    "StudiesSessionLabelsListRole",
    "StudyInRequest",
    "StudyOut",
    "StudyOutStatusEnum",
    "TopicEnum",
    "TurnInRequest",
    "TurnOut",
)
