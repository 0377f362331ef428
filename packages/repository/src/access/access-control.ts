// The access rules of `--auth` are shared with `oaibag serve` (@oaibag/oai-pmh).
export { AccessControl, challengeHeader, isUnderPrefix, linkKeepsProtection, parseBasicCredentials, type Viewer } from '@oaibag/oai-pmh';
