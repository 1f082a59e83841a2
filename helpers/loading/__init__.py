"""From datasets to training batches: sources (one per format), packing documents into rows, and the
resumable DataLoader over all of them (`make_dataloader`)."""
