from celery import shared_task

from metrics import runs


@shared_task(name="metrics.run", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def metric_run_task(run_id: int) -> bool:
    """Thin and idempotent: re-reads the run by id; a finished run makes a redelivery a no-op."""
    return runs.metric_run_execute(run_id=run_id)
