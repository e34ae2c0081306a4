"""Who acts: the research agent, model clients, the no-LLM baseline, and the run driver."""
