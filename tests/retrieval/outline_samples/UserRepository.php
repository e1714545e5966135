<?php

declare(strict_types=1);

namespace App\Repository;

use App\Entity\User;
use PDO;

interface Repository
{
    public function find(int $id): ?object;
}

trait Timestamps
{
    public function touch(User $user): void
    {
        $user->updatedAt = new \DateTimeImmutable();
    }
}

/**
 * Loads and stores users in the `users` table.
 */
final class UserRepository implements Repository
{
    use Timestamps;

    public function __construct(private PDO $db)
    {
    }

    public function find(int $id): ?User
    {
        $stmt = $this->db->prepare('SELECT * FROM users WHERE id = ?');
        $stmt->execute([$id]);
        $row = $stmt->fetch(PDO::FETCH_ASSOC);
        return $row ? User::fromRow($row) : null;
    }

    public static function tableName(): string
    {
        return 'users';
    }
}

enum Role: string
{
    case Admin = 'admin';
    case Member = 'member';
}

function user_repository(PDO $db): UserRepository
{
    return new UserRepository($db);
}
