"""Where a step's jobs run: in this process, in a pool of local worker processes, or as Ray tasks on a
cluster. A step hands its jobs to an engine and gets the results back in task order, so what it writes
never depends on where it ran."""
