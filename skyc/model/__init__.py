"""The records every stage shares: a cluster's nodes and how clusters are named."""
