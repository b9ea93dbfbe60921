"""What running and keeping models needs beyond a saved folder's own code.

The package root holds the core and exactly the files a saved model folder carries for
remote code; this subpackage holds the rest that training, tagging and the tools share:
:mod:`.safe_files` (crash-safe files and folders: manifests, locks, staged folders; it
imports nothing of the package), :mod:`.model_folders` (model and run folders as the
package reads them, and the Hub), :mod:`.compiling` (``torch.compile`` for training and
inference), :mod:`.compression` (the compression variants, compressed copies, their
checks, the compression table and card section) and :mod:`.measuring` (the benchmark
harness: workloads, paired timing, memory, the report).
"""
