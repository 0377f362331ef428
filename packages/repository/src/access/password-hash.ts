export { hashPassword, isPasswordHash, verifyPassword } from '@oaibag/oai-pmh';
