"""The solution-tree agent (AIDE's search, labcoat's parts): see :mod:`agent.tree.agent`."""
