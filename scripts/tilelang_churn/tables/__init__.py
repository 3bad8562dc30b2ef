"""The tables: passes.csv as a DataFrame, churn.csv and its summary, the comparison of releases."""
