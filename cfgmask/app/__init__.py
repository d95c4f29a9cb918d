"""The application: the ``cfgmask`` console script and what only it uses.

``cli`` (the subcommands ``check``, ``generate``, ``demo``, ``bench``),
``schema_source`` (``--schema`` inputs), ``prompts`` (the demo's prompt
library), ``judges`` (running generated documents in their language's own
engine) and ``bench`` (the quick comparison with the installed peers).

May import everything else in cfgmask; nothing in cfgmask imports it (the
top-level ``__main__`` only calls :func:`cfgmask.app.cli.main`).
"""
