"""The judge service (trusted side): persistence, Celery queue and workers, REST API."""
