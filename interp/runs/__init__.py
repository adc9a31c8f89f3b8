"""Plumbing of every run, away from the science.

- :mod:`interp.runs.artifacts`: the one artifact folder format (safetensors + JSON config);
- :mod:`interp.runs.atomic`: atomic file and folder writes;
- :mod:`interp.runs.manifest`: run manifests (config, commit, versions, hashes, seed);
- :mod:`interp.runs.outdir`: the ``--out`` folder of a run;
- :mod:`interp.runs.paths`: the cache folder and the shipped datasets;
- :mod:`interp.runs.progress`: progress bars and status lines;
- :mod:`interp.runs.resume`: what resumable training loops share.
"""
