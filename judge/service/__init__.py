"""The service, trusted side: the REST API (api/: one router per resource), the database
(models.py, db.py, migrations/) and the rules over it, one module per concern: the problems served
(catalog.py), taking and reading submissions (submissions.py), queues and the janitor's requeues
(queueing.py), workers' claims (claims.py), the boards (boards.py), contests and their freeze
(contests.py), per-user windows (windows.py), rejudges (rejudges.py), system tests
(system_tests.py), the review list (reviews.py), sanctions (sanctions.py), clarifications
(clarifications.py), accounts (accounts.py), the audit log (audit.py), the results' counter
(counters.py); publishing to the broker and the janitor (broker.py), and the worker's task
(worker.py). `kjudge`'s server and client commands are judge/commands/."""
