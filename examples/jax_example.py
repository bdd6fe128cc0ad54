"""jax_example.py - a JAX loop that keeps every step's output, so live
buffers grow.

By default JAX preallocates most of the device in one allocation, and the
report shows that one; per buffer:

    gpushim run --per-tensor -- python examples/jax_example.py
    gpushim report gpushim.<pid>.trace

(--per-tensor sets XLA_PYTHON_CLIENT_ALLOCATOR=platform and
XLA_PYTHON_CLIENT_PREALLOCATE=false.) The unfreed buffers are the 100
outputs kept in `kept`, allocated by XLA under `step`.
"""
import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    return jnp.tanh(x @ x.T)


def main():
    x = jnp.ones((2048, 2048))
    kept = []
    for _ in range(100):
        kept.append(step(x))
    jax.block_until_ready(kept)
    print(f"kept {len(kept)} outputs")


if __name__ == "__main__":
    main()
