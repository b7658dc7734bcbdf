"""gunicorn's settings for Telha clarify (`gunicorn -c gunicorn.conf.py telha.wsgi`; gunicorn
also reads this file by itself when started in the project folder).

Workers, bind address and the rest stay on the command line (or gunicorn's own
environment variables, e.g. `WEB_CONCURRENCY`); what is here is what the product needs:

- Prometheus multiprocess mode (`PROMETHEUS_MULTIPROC_DIR`): the directory is created
  before the first worker starts, and a worker that exits is marked dead so its
  live-gauge files stop counting (prometheus_client's `mark_process_dead`; its counters
  and histograms stay in the totals, as they must).
"""

import os
from pathlib import Path
from typing import Any

wsgi_app = "telha.wsgi:application"


def on_starting(server: Any) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
