"""`kjudge`'s commands (judge/cli.py assembles them from every module here), one module per place
they run: local.py on this machine, server.py on the server's host, client.py and contest.py over
the REST API."""
