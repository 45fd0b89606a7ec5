
op_CreateDBVout0"CreateDB*
db*
db_type*
absolute_path*

num_shards*
shard_id