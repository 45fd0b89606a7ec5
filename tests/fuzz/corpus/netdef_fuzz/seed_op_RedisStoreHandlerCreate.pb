
op_RedisStoreHandlerCreate?out0"RedisStoreHandlerCreate*
host*
port*

prefix