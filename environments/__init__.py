"""Where an actor acts: tasks, the Environment (action -> observation), run records, scoring."""
