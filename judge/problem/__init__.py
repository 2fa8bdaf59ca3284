"""The problem format, organizers' data: the `problem.yaml` schema (schema.py), the expressions
its sizes and metrics are written in (exprs.py), the scaffold of a new folder (scaffold.py, from
template/), and importers of other formats (importers/). The run_kernel signature's arguments are
judge/signature.py's, below both this and the languages. Trusted side."""
