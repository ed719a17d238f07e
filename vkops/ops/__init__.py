"""One module per DML operator: its descriptor and shape rules, its lowering, its NumPy face."""
