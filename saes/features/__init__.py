"""Tools built on a trained SAE's features (the SAE core, :mod:`saes`, imports none of them):

- :mod:`saes.features.browser`: each feature's top contexts, densities and logit effects;
- :mod:`saes.features.steering`: steering along a feature's decoder direction;
- :mod:`saes.features.probing`: k-sparse probes on SAE latents against the residual stream;
- :mod:`saes.features.subspace`: SAE latents scored as a DAS subspace.
"""
