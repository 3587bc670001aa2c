"""The CUDA source loader (no GPU needed): what keys CuPy's on-disk cache."""


def test_kernel_headers_digest_follows_every_header(tmp_path):
    # CuPy's disk cache keys a module by its code, not by the headers it includes: the loader
    # appends this digest to the code, so a header edit alone compiles the modules again
    from streamrank.kernels.cuda.loader import KERNEL_DIR, headers_digest

    (tmp_path / "a.cuh").write_text("#define A 1\n")
    (tmp_path / "b.cuh").write_text("#define B 1\n")
    (tmp_path / "k.cu").write_text("// not a header\n")
    first = headers_digest(tmp_path)
    (tmp_path / "k.cu").write_text("// changed\n")
    assert headers_digest(tmp_path) == first
    (tmp_path / "b.cuh").write_text("#define B 2\n")
    assert headers_digest(tmp_path) != first
    assert len(headers_digest(KERNEL_DIR)) == 16
