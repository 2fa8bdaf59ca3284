"""The service, trusted side: the REST API (api.py), the database (models.py, db.py, migrations/)
and the rules over it (store.py), publishing to the broker and the janitor (broker.py), the
worker's task (worker.py), the server's commands (admin.py) and the API's client (client.py)."""
