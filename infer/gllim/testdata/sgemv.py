# OpenBLAS sgemv of the forward pass's size (450×1888 float32), one thread:
# the machine's floor that issue #13 measures posed against. numpy calls
# whichever libblas.so.3 Debian's alternatives point at: the reference BLAS
# (libblas3) is 20 times slower than OpenBLAS and no floor at all, so say
# which one was loaded and refuse to print a reference figure as the floor.
import os, sys, timeit
import numpy as np
rng = np.random.default_rng(1)
A = rng.standard_normal((450, 1888)).astype(np.float32)
x = rng.standard_normal(1888).astype(np.float32)
y = np.empty(450, dtype=np.float32)
np.dot(A, x, out=y)

def blas_libraries():
    """The BLAS shared objects mapped into this process, resolved."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            name = os.path.basename(path)
            if "blas" in name and ".so" in name:
                libs.add(os.path.realpath(path))
    return sorted(libs)

libs = blas_libraries()
if not any("openblas" in l for l in libs):
    print("sgemv floor: numpy uses %s, not OpenBLAS: no floor measured (apt-get install libopenblas0-pthread)"
          % (", ".join(libs) or "no BLAS library"))
    sys.exit(1)
for _ in range(2000):
    np.dot(A, x, out=y)
best = []
for rep in range(7):
    n = 20000
    t = timeit.timeit(lambda: np.dot(A, x, out=y), number=n)
    best.append(t / n * 1e6)
best.sort()
print("sgemv 450x1888 float32 (%s), OPENBLAS_NUM_THREADS=%s: min %.1f us, median %.1f us, max %.1f us"
      % (", ".join(libs), os.environ.get("OPENBLAS_NUM_THREADS"), best[0], best[3], best[-1]))
