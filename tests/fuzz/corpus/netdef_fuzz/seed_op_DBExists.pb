
op_DBExists=out0"DBExists*
absolute_path*
db_name*
db_type