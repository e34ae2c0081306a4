"""labcoat from Inspect (``pip install 'labcoat[inspect]'``): its sandbox as the ``labcoat``,
``labcoat-local`` and ``labcoat-docker`` sandbox types (:mod:`interop.inspect.sandbox`) and its
tasks as ``labcoat/<task>`` (:mod:`interop.inspect.tasks`), registered through the ``inspect_ai``
entry point (:mod:`interop.inspect._registry`). Importing this package imports no inspect_ai."""
