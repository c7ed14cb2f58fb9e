# Source this file to point a shell at the pyaclnn toolkit, as with CANN's set_env.sh:
#   source "$(python -m pyaclnn home)/set_env.sh"
_pa_src="${BASH_SOURCE[0]:-$0}"
_pa_home="$(cd "$(dirname "${_pa_src}")" && pwd)"
export ASCEND_TOOLKIT_HOME="${_pa_home}"
export ASCEND_HOME_PATH="${_pa_home}"
export ASCEND_OPP_PATH="${_pa_home}/opp"
export LD_LIBRARY_PATH="${_pa_home}/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
unset _pa_src _pa_home
