"""model.py - a model whose layers and activations live in (simulated)
device memory, and a cache that keeps one entry per step by mistake."""

MiB = 1024 * 1024
KiB = 1024


class Model:
    def __init__(self, driver):
        self.driver = driver
        self.weights = []
        self.cache = []

    def load_weights(self, layers):
        for _ in range(layers):
            self.weights.append(self.driver.alloc(1 * MiB))  # site: weights

    def forward(self, step):
        def activation():
            return self.driver.alloc(2 * MiB)  # site: activation

        a = activation()  # site: first activation
        b = activation()  # site: second activation
        remember(self, step)  # site: remember
        self.driver.free(a)
        self.driver.free(b)


def remember(model, step):
    model.cache.append(model.driver.alloc(256 * KiB))  # site: cache
