"""multiprocessing.Pool and multiprocessing.Queue need POSIX semaphores, which glibc makes in /dev/shm. Lambda
mounts no /dev/shm: both raise OSError [Errno 38] Function not implemented there (AWS Compute Blog, "Parallel
Processing in Python with AWS Lambda"; still so on Amazon Linux 2023). multiprocessing.Pipe and Process work."""
import multiprocessing


def _double(x):
    return 2 * x


def handler(event, context):
    seen = {}
    try:
        with multiprocessing.Pool(2) as pool:
            seen["pool"] = pool.map(_double, [1, 2])
    except OSError as exc:
        seen["pool"] = f"OSError {exc.errno}"
    try:
        multiprocessing.Queue()
        seen["queue"] = "made"
    except OSError as exc:
        seen["queue"] = f"OSError {exc.errno}"
    return seen
