"""pyhudi: Apache Hudi tables from PySpark."""
