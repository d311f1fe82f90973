import sys
import jax

mesh = jax.make_mesh((2, 4), ('x', 'y'))
print(mesh)
print(mesh.devices)
print(dict(mesh.shape))
print('@@END0@@')
sys.stdout.flush()
import jax
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ('x', 'y'))
try:
    NamedSharding(mesh, P('y', None)).shard_shape((6, 6))
except ValueError as e:
    print(type(e).__name__)
print('@@END1@@')
sys.stdout.flush()
import numpy as np
import jax
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ('x', 'y'))
a = np.arange(48, dtype=np.float32).reshape(8, 6)
x = jax.device_put(a, NamedSharding(mesh, P('y', None)))

print(x.sharding)
print(x.sharding.shard_shape(x.shape))
print(jax.typeof(x))
print('@@END2@@')
sys.stdout.flush()
for s in x.addressable_shards:
    print(s.device.id, s.index, s.data.shape)
print(x.addressable_shards[5].data)
print('@@END3@@')
sys.stdout.flush()
coord = {d.id: c for c, d in np.ndenumerate(mesh.devices)}
print(coord[5])
print('@@END4@@')
sys.stdout.flush()
jax.debug.visualize_array_sharding(x)
print('@@END5@@')
sys.stdout.flush()
