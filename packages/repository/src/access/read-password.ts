export { readPassword } from '@oaibag/oai-pmh';
