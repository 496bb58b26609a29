"""The published formats: each module here is one exporter (pipeline/publication.py's `Exporter`,
named `EXPORTER`), and its name is its folder in the run's output (OUT/hf, OUT/tau2). Publishing
runs every module found here; nothing else lists them."""
