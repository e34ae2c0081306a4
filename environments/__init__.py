"""Where an actor acts, in floors; a floor imports only the floors below it (the ``layers``
contract in ``pyproject.toml``), and inside a floor modules import each other by module path,
never through the floor's own ``__init__`` (its public face, for the floors and rooms above):

- :mod:`~environments.imports`: runs made elsewhere (MLAgentBench's logs) become labcoat runs;
- :mod:`~environments.reports`: reports over run folders;
- :mod:`~environments.acting`: the Environment (action -> observation) and the actions;
- :mod:`~environments.scoring`: evaluation in the sandbox, scores, baselines;
- :mod:`~environments.record`: the run record (run.json, trace, snapshots, backups);
- :mod:`~environments.task`: the task folder, the suite, preparing a task;
- :mod:`~environments.untrusted`: bounded parsing and terminal text;
- :mod:`~environments.in_sandbox`: the programs sent into a sandbox, and their wire format.

``environments/tasks/`` is data: the suite's task folders.
"""
