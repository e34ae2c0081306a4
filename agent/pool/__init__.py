"""The research pool (``--agent pool``): many candidates searched at once on Ray workers.

See :mod:`agent.pool.agent` for the driver, :mod:`agent.pool.worker` for what one worker does
with a node, and ``docs/agents.md`` ("The research pool") for how to run it.
"""
