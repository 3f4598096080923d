"""convcanon: exact conv canonicalization (StableHLO/MHLO) and stride-faithful MIGraphX lowering."""

__version__ = "0.1.0"
