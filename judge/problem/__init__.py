"""The problem format, organizers' data: the `problem.yaml` schema (schema.py), the expressions
its sizes and metrics are written in (exprs.py), the run_kernel signature rendered per language
(signature.py) and the scaffold of a new folder (scaffold.py, from template/). Trusted side."""
