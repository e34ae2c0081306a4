"""Everything a person touches in a terminal: the ``labcoat`` command line and the Textual app."""
