"""`kjudge`'s commands (judge/cli.py assembles them), one module per place they run: local.py on
this machine, server.py on the server's host, client.py over the REST API."""
