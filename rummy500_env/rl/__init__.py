"""The env-facing layer over the engine: the flat action codec (`actions`), the observation
encoders (`observation`, `observation_incremental`), the PettingZoo AEC env (`rummy500_v0`),
the Gymnasium single-agent view (`single_agent`) and the registration with both registries
(`registration`). Numpy, Gymnasium and PettingZoo enter the package here and nowhere below."""
