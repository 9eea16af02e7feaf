"""Stand-in for the get-pip bootstrap script ansible-test downloads from ci-files.testing.ansible.com,
a host this network does not reach. It puts the pip bundled with Python (ensurepip) into the
fresh venv, then installs what ansible-test asked for (pip==X) from the package registry."""
import subprocess
import sys

# In a child process: ensurepip blanks the pip configuration (PIP_CONFIG_FILE=/dev/null) of its
# own process, which would hide the CA bundle the registry needs from the install below.
subprocess.check_call([sys.executable, "-m", "ensurepip"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
